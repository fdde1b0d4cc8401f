import os

import jwt
from flask import Flask, request

app = Flask(__name__)


@app.route("/me")
def me():
    token = request.headers["Authorization"].split()[1]
    claims = jwt.decode(token, os.environ["JWT_KEY"], algorithms=["HS256"])
    return {"sub": claims["sub"]}

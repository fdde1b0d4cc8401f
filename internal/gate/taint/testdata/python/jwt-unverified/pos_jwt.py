import jwt
from flask import Flask, request

app = Flask(__name__)


@app.route("/me")
def me():
    token = request.headers["Authorization"].split()[1]
    claims = jwt.decode(token, options={"verify_signature": False})  # taint: jwt-unverified
    old = jwt.decode(token, "k", verify=False)  # taint: jwt-unverified
    return {"sub": claims["sub"], "old": old["sub"]}

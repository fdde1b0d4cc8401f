import ast

from flask import Flask, request

app = Flask(__name__)


@app.route("/calc")
def calc():
    value = ast.literal_eval(request.args["e"])
    total = eval("1 + 2")
    n = int(request.args["n"])
    square = eval("n * n", {"n": n})
    return {"value": value, "total": total, "square": square}

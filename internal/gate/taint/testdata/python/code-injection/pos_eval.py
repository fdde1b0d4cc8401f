from flask import Flask, request

app = Flask(__name__)


class Calculator:
    def __init__(self, expr):
        self.expr = expr

    def result(self):
        return eval(self.expr)  # taint: code-injection


@app.route("/calc")
def calc():
    c = Calculator(request.args["e"])
    return {"value": c.result()}


@app.route("/run", methods=["POST"])
def run():
    code = request.get_json()["code"]
    exec(compile(code, "<input>", "exec"))  # taint: code-injection
    return {}

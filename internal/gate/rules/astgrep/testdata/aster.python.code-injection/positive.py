from flask import request


def calc():
    # ruleid: aster.python.code-injection
    return str(eval(request.args.get("expr")))


def setter(name, value):
    # ruleid: aster.python.code-injection
    exec("config." + name + " = " + value)


def formatted(field):
    # ruleid: aster.python.code-injection
    return eval(f"record.{field}")


def ask():
    # ruleid: aster.python.code-injection
    return eval(input("> "))

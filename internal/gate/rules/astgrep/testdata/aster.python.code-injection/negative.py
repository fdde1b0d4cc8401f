import ast


def load_config(path, namespace):
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    exec(code, namespace)


def constant():
    return eval("1 + 2")


def literal(text):
    return ast.literal_eval(text)


class Pattern:
    def exec(self, text):
        return text


def method(p, s):
    return p.exec(s + "x")

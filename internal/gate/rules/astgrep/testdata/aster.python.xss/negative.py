import jinja2
from markupsafe import Markup, escape


def env():
    return jinja2.Environment(loader=jinja2.FileSystemLoader("t"), autoescape=True)


def greet(name):
    return Markup("<b>Hello {}</b>").format(name)


def fixed():
    return Markup("<br>")


def escaped(name):
    return Markup("<b>%s</b>") % escape(name)

import aiohttp_jinja2
import jinja2
from markupsafe import Markup


def setup(app):
    # ruleid: aster.python.xss
    aiohttp_jinja2.setup(app, loader=jinja2.PackageLoader("app"), autoescape=False)


def env():
    # ruleid: aster.python.xss
    return jinja2.Environment(loader=jinja2.FileSystemLoader("t"), autoescape=False)


def greet(name):
    # ruleid: aster.python.xss
    return Markup(f"<b>Hello {name}</b>")


def link(url, text):
    # ruleid: aster.python.xss
    return Markup('<a href="%s">%s</a>' % (url, text))


def aliased(app, setup_jinja, loader):
    # ruleid: aster.python.xss
    setup_jinja(app, loader=loader,
                autoescape=False)

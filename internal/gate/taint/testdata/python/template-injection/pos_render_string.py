import jinja2
from flask import Flask, render_template_string, request

app = Flask(__name__)


@app.route("/greet")
def greet():
    name = request.args.get("name", "guest")
    template = "<h1>Hello %s</h1>" % name
    return render_template_string(template)  # taint: template-injection


@app.route("/preview", methods=["POST"])
def preview():
    env = jinja2.Environment(autoescape=True)
    return env.from_string(request.form["body"]).render()  # taint: template-injection

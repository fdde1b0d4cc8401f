import html

from django.http import HttpResponse
from flask import Flask, jsonify, render_template, request
from markupsafe import escape

app = Flask(__name__)


@app.route("/hello")
def hello():
    name = request.args.get("name", "")
    return "<h1>Hello " + escape(name) + "</h1>"


@app.route("/api")
def api():
    return jsonify(name=request.args["name"])


@app.route("/page")
def page():
    return render_template("page.html", name=request.args["name"])


def plain(request):
    return HttpResponse(request.GET["q"], content_type="text/plain")


def escaped(request):
    return HttpResponse("<p>" + html.escape(request.GET["q"]) + "</p>")

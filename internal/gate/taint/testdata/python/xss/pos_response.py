from django.http import HttpResponse
from flask import Flask, Markup, make_response, request

app = Flask(__name__)


@app.route("/hello")
def hello():
    name = request.args.get("name", "")
    return "<h1>Hello " + name + "</h1>"  # taint: xss


@app.route("/card")
def card():
    title = request.args["title"]
    resp = make_response(f"<div>{title}</div>")  # taint: xss
    return resp


@app.route("/bio")
def bio():
    return {"html": str(Markup(request.args["bio"]))}  # taint: xss


def page(request):
    return HttpResponse("<p>" + request.GET["q"] + "</p>")  # taint: xss

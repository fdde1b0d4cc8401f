from django.http import HttpResponseRedirect
from flask import Flask, redirect, request

app = Flask(__name__)


@app.route("/login")
def login():
    nxt = request.args.get("next", "/")
    return redirect(nxt)  # taint: open-redirect


def go(request):
    target = request.GET["to"]
    return HttpResponseRedirect(target)  # taint: open-redirect

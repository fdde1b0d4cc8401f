from flask import Flask, request, session

app = Flask(__name__)
app.secret_key = "change me"


@app.route("/prefs", methods=["POST"])
def prefs():
    session["role"] = request.form["role"]  # taint: trust-boundary
    return {}


def set_lang(request):
    request.session["lang"] = request.GET["lang"]  # taint: trust-boundary

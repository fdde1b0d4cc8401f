from flask import Flask, make_response

app = Flask(__name__)
app.config["SESSION_COOKIE_SECURE"] = True


@app.route("/login")
def login():
    resp = make_response("ok")
    resp.set_cookie("sid", "abc", secure=True, httponly=True, samesite="Lax")
    return resp

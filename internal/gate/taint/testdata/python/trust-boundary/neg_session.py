from flask import Flask, request, session

app = Flask(__name__)
ROLES = {"reader", "writer"}


@app.route("/prefs", methods=["POST"])
def prefs():
    role = request.form["role"]
    if role not in ROLES:
        return {"error": "role"}, 400
    session["role"] = role
    session["visits"] = session.get("visits", 0) + 1
    return {}


@app.route("/login", methods=["POST"])
def login():
    if request.form["user"] == "admin" and request.form["password"] == app.config["ADMIN_PASSWORD"]:
        session["user"] = request.form["user"]
        return {}
    return {"error": "login"}, 401

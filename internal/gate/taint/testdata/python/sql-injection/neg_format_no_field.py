# str.format on text with no replacement field drops its arguments: the
# query is the constant.
import sqlite3

from flask import Flask, request

app = Flask(__name__)


@app.route("/count")
def count():
    db = sqlite3.connect("app.db")
    name = request.args["name"]
    db.execute("SELECT count(*) FROM users".format(name))
    query = "SELECT count(*) FROM orders"
    db.execute(query.format(name))
    return "ok"

# The same shapes with a replacement field: the input is in the query.
import sqlite3

from flask import Flask, request

app = Flask(__name__)


@app.route("/find")
def find():
    db = sqlite3.connect("app.db")
    name = request.args["name"]
    query = "SELECT * FROM users WHERE name = '{}'"
    cur = db.cursor()
    cur.execute(query.format(name))  # taint: sql-injection
    return "ok"

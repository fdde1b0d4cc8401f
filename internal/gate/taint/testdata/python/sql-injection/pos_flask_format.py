import sqlite3

from flask import Flask, request

app = Flask(__name__)


def build_query(name):
    return "SELECT * FROM users WHERE name = '%s'" % name


@app.route("/users")
def users():
    q = request.args.get("q", "")
    sql = build_query(q.strip())
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute(sql)  # taint: sql-injection
    return {"rows": cur.fetchall()}

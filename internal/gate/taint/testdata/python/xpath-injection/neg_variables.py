from flask import Flask, request
from lxml import etree

app = Flask(__name__)
TREE = etree.parse("users.xml")


@app.route("/user")
def user():
    name = request.args["name"]
    found = TREE.xpath("//user[@name=$name]", name=name)
    pos = name.find("@")
    return {"n": len(found), "at": pos}

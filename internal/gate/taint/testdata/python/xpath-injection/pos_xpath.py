from flask import Flask, request
from lxml import etree

app = Flask(__name__)
TREE = etree.parse("users.xml")


@app.route("/user")
def user():
    name = request.args["name"]
    found = TREE.xpath("//user[@name='" + name + "']")  # taint: xpath-injection
    root = TREE.getroot()
    first = root.find(f".//user[@name='{name}']")  # taint: xpath-injection
    return {"n": len(found), "first": first is not None}

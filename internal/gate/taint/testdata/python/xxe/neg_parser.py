import xml.etree.ElementTree as ET

from flask import Flask, request
from lxml import etree

app = Flask(__name__)


@app.route("/upload", methods=["POST"])
def upload():
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    doc = etree.fromstring(request.data, parser)
    other = ET.fromstring(request.data)
    return {"root": doc.tag, "other": other.tag}

import xml.sax

from flask import Flask, request
from lxml import etree

app = Flask(__name__)


@app.route("/upload", methods=["POST"])
def upload():
    parser = etree.XMLParser(resolve_entities=True)  # taint: xxe
    doc = etree.fromstring(request.data, parser)
    sax = xml.sax.make_parser()
    sax.setFeature(xml.sax.handler.feature_external_ges, True)  # taint: xxe
    return {"root": doc.tag}

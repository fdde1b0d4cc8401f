import xml.sax
from xml.sax.handler import feature_external_ges

import defusedxml.ElementTree as ET
from lxml import etree


def parse(data):
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    return etree.fromstring(data, parser)


def sax(stream):
    p = xml.sax.make_parser()
    p.setFeature(feature_external_ges, False)
    p.parse(stream)


def safe(data):
    return ET.fromstring(data)

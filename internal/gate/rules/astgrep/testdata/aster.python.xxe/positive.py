import xml.sax
from xml.sax.handler import feature_external_ges

from lxml import etree


def parse(data):
    # ruleid: aster.python.xxe
    parser = etree.XMLParser(resolve_entities=True)
    return etree.fromstring(data, parser)


def sax(stream, handler):
    p = xml.sax.make_parser()
    # ruleid: aster.python.xxe
    p.setFeature(feature_external_ges, True)
    p.setContentHandler(handler)
    p.parse(stream)


def network(data):
    # ruleid: aster.python.xxe
    return etree.fromstring(data, etree.XMLParser(load_dtd=True, no_network=False))

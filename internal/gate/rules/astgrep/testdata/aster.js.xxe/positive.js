const libxmljs = require("libxmljs");

function upload(req, res) {
    // ruleid: aster.js.xxe
    const doc = libxmljs.parseXml(req.body.xml, { noent: true, noblanks: true });
    res.send(doc.root().text());
}

function parse(text) {
    // ruleid: aster.js.xxe
    return libxmljs.parseXmlString(text, { noent: true });
}

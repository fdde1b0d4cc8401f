const libxmljs = require("libxmljs");

function upload(req, res) {
    const doc = libxmljs.parseXml(req.body.xml, { noent: false });
    res.send(doc.root().text());
}

function other(text) {
    return JSON.parse(text, { noent: true });
}

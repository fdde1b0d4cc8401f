// XML parsed with the defaults (no entity substitution).
const express = require("express");
const libxmljs = require("libxmljs");

const app = express();

app.post("/import", (req, res) => {
  const doc = libxmljs.parseXml(req.body, { noent: false, nonet: true });
  const other = libxmljs.parseXmlString(req.body);
  res.json({ a: doc.root().name(), b: other.root().name() });
});

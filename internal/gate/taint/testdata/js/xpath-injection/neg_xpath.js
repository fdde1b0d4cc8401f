// A fixed XPath expression; the input is compared in code.
const express = require("express");
const xpath = require("xpath");
const { DOMParser } = require("@xmldom/xmldom");

const app = express();
const doc = new DOMParser().parseFromString("<users><user name='a'/></users>", "text/xml");

app.get("/user", (req, res) => {
  const nodes = xpath.select("//user", doc).filter((n) => n.getAttribute("name") === req.query.name);
  res.json({ n: nodes.length });
});

// An XPath expression built from the query string.
const express = require("express");
const xpath = require("xpath");
const { DOMParser } = require("@xmldom/xmldom");

const app = express();
const doc = new DOMParser().parseFromString("<users><user name='a'/></users>", "text/xml");

app.get("/user", (req, res) => {
  const nodes = xpath.select("//user[@name='" + req.query.name + "']", doc); // taint: xpath-injection
  res.json({ n: nodes.length });
});

// libxml2 (WebAssembly build) told to substitute entities.
async function parseUpload(libxml2, req, res) {
  const option = libxml2.ParseOption.XML_PARSE_NOENT | libxml2.ParseOption.XML_PARSE_DTDLOAD;
  const doc = libxml2.XmlDocument.fromString(req.body.xml, { option }); // taint: xxe
  res.json({ root: doc.root.name });
}

module.exports = { parseUpload };

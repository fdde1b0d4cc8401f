const serialize = require("node-serialize");
const yaml = require("js-yaml");

function profile(req, res) {
    // ruleid: aster.js.insecure-deserialization
    const obj = serialize.unserialize(Buffer.from(req.cookies.profile, "base64").toString());
    res.json(obj);
}

function load(text) {
    // ruleid: aster.js.insecure-deserialization
    return yaml.load(text, { schema: yaml.DEFAULT_FULL_SCHEMA });
}

const needle = require("needle");
const axios = require("axios");

function research(req, res) {
    const url = req.query.url + req.query.symbol;
    // ruleid: aster.js.ssrf
    return needle.get(url, (error, response, body) => res.send(body));
}

async function proxy(req, res) {
    // ruleid: aster.js.ssrf
    const r = await fetch(req.body.target);
    res.send(await r.text());
}

async function preview(req, res) {
    // ruleid: aster.js.ssrf
    const { data } = await axios.get(`${req.query.site}/meta.json`);
    res.json(data);
}

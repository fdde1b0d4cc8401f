const vm = require("vm");

exports.handleContributionsUpdate = (req, res) => {
    // ruleid: aster.js.code-injection
    const preTax = eval(req.body.preTax);
    res.json({ preTax });
};

function compute(req, res) {
    const expr = req.query.expr;
    // ruleid: aster.js.code-injection
    const fn = new Function("x", "return " + expr);
    res.send(String(fn(1)));
}

function later(name) {
    // ruleid: aster.js.code-injection
    setTimeout(`run("${name}")`, 10);
}

function sandboxed(req) {
    // ruleid: aster.js.code-injection
    return vm.runInNewContext(req.body.code, {});
}

function parse(req, res) {
    const preTax = parseInt(req.body.preTax, 10);
    res.json({ preTax, total: eval("1 + 2") });
}

function later(name) {
    setTimeout(() => run(name), 10);
    setInterval(function () { tick(name); }, 1000);
}

function make() {
    return new Function("a", "b", "return a + b");
}

function local(code) {
    return eval(code);
}

// Input evaluated inside a vm sandbox by an evaluator it was given.
const vm = require("vm");
const { eval: safeEval } = require("notevil");

function order(req, res) {
  const lines = req.body.orderLines || "";
  const sandbox = { safeEval, lines };
  vm.createContext(sandbox);
  vm.runInContext("safeEval(lines)", sandbox, { timeout: 2000 }); // taint: code-injection
  res.json({ ok: true });
}

module.exports = { order };

const assert = require("assert");
assert.strictEqual([1, 2, 3].map((x) => x * 2).join(","), "2,4,6");
console.log("ok - doubles");

const assert = require("assert");
assert.strictEqual(0.1 + 0.2, 0.3, "floating point addition is exact");

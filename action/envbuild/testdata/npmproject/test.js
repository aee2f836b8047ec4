// The repository's test: it needs the dependency the environment installed.
const isNumber = require("is-number");
const assert = require("assert");
assert.strictEqual(isNumber(5), true);
assert.strictEqual(isNumber("five"), false);
console.log("ok: is-number works");

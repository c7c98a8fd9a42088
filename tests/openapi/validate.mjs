// validate.mjs - docs/openapi.json against the OpenAPI 3.1 schema (the OpenAPI Initiative's,
// as @seriousme/openapi-schema-validator carries it, pinned in package-lock.json), and every
// $ref of it resolved. Usage: node validate.mjs FILE. Exit 0 when valid, 1 with the errors.
import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";

const file = process.argv[2];
const doc = JSON.parse(readFileSync(file, "utf8"));
const validator = new Validator();
const res = await validator.validate(doc);
if (!res.valid) {
  console.error(`${file}: not a valid OpenAPI document`);
  console.error(JSON.stringify(res.errors, null, 2));
  process.exit(1);
}
if (!validator.version.startsWith("3.1")) {
  console.error(`${file}: OpenAPI ${validator.version}, not 3.1`);
  process.exit(1);
}
try {
  validator.resolveRefs();
} catch (e) {
  console.error(`${file}: a $ref does not resolve: ${e.message}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${validator.version}, ${Object.keys(doc.paths).length} paths`);

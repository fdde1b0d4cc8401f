import https from "https";
import { readFileSync } from "fs";

const agent = new https.Agent({ rejectUnauthorized: true, ca: readFileSync("ca.pem") });

export function secure() {
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "1";
}

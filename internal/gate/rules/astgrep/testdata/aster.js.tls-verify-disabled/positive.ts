import https from "https";

// ruleid: aster.js.tls-verify-disabled
const agent = new https.Agent({ rejectUnauthorized: false });

export function insecure() {
    // ruleid: aster.js.tls-verify-disabled
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
}

export const options = {
    url: "https://internal",
    // ruleid: aster.js.tls-verify-disabled
    strictSSL: false,
};

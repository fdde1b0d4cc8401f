// Browser code writing the URL into the page.
const params = new URLSearchParams(window.location.search);
const q = params.get("q");
document.getElementById("results").innerHTML = "Results for " + q; // taint: xss

const frag = location.hash.slice(1);
document.write("<a href='#'>" + frag + "</a>"); // taint: xss
document.getElementById("title").textContent = frag;

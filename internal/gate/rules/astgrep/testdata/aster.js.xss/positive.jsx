export function render(el, name) {
    // ruleid: aster.js.xss
    el.innerHTML = "<b>" + name + "</b>";
}

export function fromHash() {
    // ruleid: aster.js.xss
    document.write(window.location.hash);
}

export function Comment({ comment }) {
    // ruleid: aster.js.xss
    return <div dangerouslySetInnerHTML={{ __html: `<p>${comment.body}</p>` }} />;
}

export function search(req, res) {
    // ruleid: aster.js.xss
    res.send(`<h1>Results for ${req.query.q}</h1>`);
}

export function list(ul, item) {
    // ruleid: aster.js.xss
    ul.insertAdjacentHTML("beforeend", `<li>${item}</li>`);
}

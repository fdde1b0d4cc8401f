export function render(el, name) {
    el.textContent = name;
    el.innerHTML = "<b>static</b>";
}

export function Comment({ comment }) {
    return <div>{comment.body}</div>;
}

export function search(req, res) {
    res.send({ results: [], q: req.query.q });
    res.send("<h1>Search</h1>");
}

// Browser code sending the user where the URL says.
const target = /[?&]next=([^&]*)/.exec(window.location.search)[1];
window.location = decodeURIComponent(target); // taint: open-redirect

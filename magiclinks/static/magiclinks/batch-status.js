// Polls the batch's status JSON and redraws the status page until the batch is PROCESSED or FAILED.
(function () {
  "use strict";
  var root = document.getElementById("batch");
  if (!root) { return; }
  var url = root.getAttribute("data-status-url");
  var messages = {
    RECEIVED: "Your files were received and are being processed.",
    PROCESSED: "Your files have been processed."
  };
  // The page's title says how the upload ended, as the page rendered then would (the tab a user comes back to).
  var titles = { PROCESSED: "Upload processed", FAILED: "Upload failed" };
  var company = document.title.indexOf(" · ") >= 0 ? document.title.slice(document.title.indexOf(" · ")) : "";

  function cell(text) {
    var td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    return td;
  }

  // Only what changed is written: the status line is a live region (role=status), and a screen reader announces it
  // again at every write, even of the same text (every 1.5 s while the batch is processed).
  function setText(id, text) {
    var node = document.getElementById(id);
    if (node.textContent !== text) { node.textContent = text; }
  }

  var drawnFiles = null;

  function draw(batch) {
    var finished = batch.status === "PROCESSED" || batch.status === "FAILED";
    if (root.getAttribute("data-status") !== batch.status) { root.setAttribute("data-status", batch.status); }
    if (titles[batch.status] && document.title !== titles[batch.status] + company) {
      document.title = titles[batch.status] + company;
    }
    var refresh = document.getElementById("batch-refresh");
    if (refresh && finished && !refresh.hidden) {
      // Focus on the link would fall to the page's body, nowhere for a keyboard or a screen reader: it goes on to
      // what follows, the next thing to do.
      var focused = refresh.contains(document.activeElement);
      refresh.hidden = true;
      if (focused) { document.getElementById("batch-next").focus(); }
    }
    setText("batch-status", batch.status);
    setText("batch-message", messages[batch.status] ||
      ("Processing failed" + (batch.statusDetails ? ": " + batch.statusDetails : "") + "."));
    var notice = document.getElementById("batch-status").parentNode;
    var className = "notice" + (batch.status === "PROCESSED" ? " notice-ok" : batch.status === "FAILED" ? " notice-error" : "");
    if (notice.className.replace(/\s+/g, " ").trim() !== className) { notice.className = className; }
    var files = JSON.stringify([batch.status, batch.files]);
    if (files === drawnFiles) { return; }
    drawnFiles = files;
    var body = document.getElementById("batch-files");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    if (!batch.files.length) {
      var empty = document.createElement("tr");
      var td = cell(batch.status === "FAILED" ? "No file could be read from the upload." : "No files yet.");
      td.colSpan = 3;
      empty.appendChild(td);
      body.appendChild(empty);
    }
    batch.files.forEach(function (f) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-status", f.status);
      tr.appendChild(cell(f.fileName));
      tr.appendChild(cell(f.status));
      tr.appendChild(cell(f.message));
      body.appendChild(tr);
    });
  }

  // The link is gone (revoked, expired, its service deactivated) or the batch with it: the page itself now says
  // why, so it is loaded again instead of being polled for ever.
  var GONE = [403, 404, 410];

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        if (GONE.indexOf(response.status) >= 0) { window.location.reload(); return undefined; }
        return response.ok ? response.json() : null;
      })
      .then(function (batch) {
        if (batch === undefined) { return; }
        if (batch) { draw(batch); }
        if (!batch || (batch.status !== "PROCESSED" && batch.status !== "FAILED")) { setTimeout(poll, 1500); }
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();

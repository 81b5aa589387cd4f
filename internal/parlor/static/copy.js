// Copy buttons: a button with data-copy="ID" copies the value of the
// element with that id. Without script the value stays selectable.
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-copy]");
  if (!button) return;
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (!source) return;
  var text = source.value !== undefined ? source.value : source.textContent;
  var done = function () {
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = "Copy"; }, 2000);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, function () { source.select(); });
  } else if (source.select) {
    source.select();
  }
});

// The Models page's playground: the question is sent with Accept:
// text/event-stream and the answer is written as its chunks arrive.
// Without script the form posts and the page shows the whole answer.
(function () {
  var form = document.getElementById("playground");
  if (!form || !window.fetch || !window.TextDecoder) return;
  var answer = document.getElementById("playground-answer");
  var error = document.getElementById("playground-error");
  var button = form.querySelector("button");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    answer.textContent = "";
    error.textContent = "";
    button.disabled = true;
    var done = function () { button.disabled = false; };
    fetch(form.action, {
      method: "POST",
      headers: { "Accept": "text/event-stream" },
      body: new URLSearchParams(new FormData(form)),
      credentials: "same-origin"
    }).then(function (res) {
      if (!res.ok || !res.body) {
        return res.text().then(function (text) { error.textContent = text || "The model could not answer."; });
      }
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var pending = "";
      var read = function () {
        return reader.read().then(function (step) {
          if (step.done) return;
          pending += decoder.decode(step.value, { stream: true });
          var events = pending.split("\n\n");
          pending = events.pop();
          for (var i = 0; i < events.length; i++) {
            var line = events[i].trim();
            if (line.indexOf("data: ") !== 0) continue;
            var data = line.slice(6);
            if (data === "[DONE]") return;
            var chunk;
            try { chunk = JSON.parse(data); } catch (e) { continue; }
            if (chunk.error) {
              error.textContent = chunk.error.message || "The model failed mid-answer.";
              return;
            }
            var choices = chunk.choices || [];
            for (var j = 0; j < choices.length; j++) {
              if (choices[j].delta && choices[j].delta.content) answer.textContent += choices[j].delta.content;
            }
          }
          return read();
        });
      };
      return read();
    }).catch(function () {
      error.textContent = "The platform could not be reached. Try again shortly.";
    }).then(done, done);
  });
})();

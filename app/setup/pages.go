package setup

import "html/template"

// The local pages. html/template escapes every value by context; the manifest sits in
// an attribute, so its JSON is escaped there and the browser posts it back verbatim.
// They carry no script: the admin presses the button, as GitHub's docs show.

const pageStyle = `<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.45}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
code{background:#f3f3f3;padding:0 .2rem}button{font-size:1.05rem;padding:.5rem 1rem;margin-top:1rem}</style>`

var startPage = template.Must(template.New("start").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Create the Bumper GitHub App</title>` + pageStyle + `</head>
<body>
<h1>Create the Bumper GitHub App</h1>
<p>The button below opens {{.GitHub}} with the App <strong>{{.Name}}</strong> filled in, for {{.Owner}}.
GitHub shows it before creating it, and then sends this browser back here, where <code>bumper setup</code>
saves the App's ID, private key and webhook secret.</p>
<p>Webhook URL: <code>{{.Hook}}</code></p>
<h2>Repository permissions</h2>
<table><tr><th>permission</th><th>access</th><th>why</th></tr>
{{range .Permissions}}<tr><td>{{.Name}}</td><td>{{.Access}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
<h2>Webhook events</h2>
<table><tr><th>event</th><th>why</th></tr>
{{range .Events}}<tr><td>{{.Name}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit" id="create">Create the App on GitHub</button>
</form>
</body></html>
`))

var messagePage = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>` + pageStyle + `</head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>The App is created</title>` + pageStyle + `</head>
<body><h1 id="done">The App is created</h1>
<p><strong>{{.App.Name}}</strong> (ID {{.App.ID}}) belongs to {{.App.Owner}}. Its credentials are in <code>{{.Dir}}</code>:</p>
<ul>{{range .Files}}<li><code>{{.}}</code></li>{{end}}</ul>
<p>Next, <a href="{{.App.HTMLURL}}/installations/new">install it</a> on the repositories Bumper works on;
the terminal says the rest. You can close this page.</p>
</body></html>
`))

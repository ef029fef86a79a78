import type { Template } from './index.js';

export const staticTemplate: Template = {
  name: 'static-html',
  description: 'A static HTML site with a stylesheet and a script.',
  framework: 'static',
  files: {
    'index.html': `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>My site</title>
    <link rel="stylesheet" href="styles.css" />
  </head>
  <body>
    <main>
      <h1>Hello from Treehouse</h1>
      <p id="greeting">This page is served from a Treehouse project.</p>
    </main>
    <script src="main.js"></script>
  </body>
</html>
`,
    'styles.css': `body {
  margin: 0;
  font-family: system-ui, sans-serif;
  background: #f4f7f2;
  color: #1d2a1a;
}

main {
  max-width: 40rem;
  margin: 4rem auto;
  padding: 0 1rem;
}
`,
    'main.js': `const greeting = document.getElementById("greeting");
if (greeting) {
  greeting.textContent =
    "This page is served from a Treehouse project, and its script ran.";
}
`,
  },
};

import type { Template } from './index.js';

export const hydrogenTemplate: Template = {
  name: 'shopify-hydrogen',
  description: 'A Shopify Hydrogen storefront skeleton (Remix-based) with a home route.',
  framework: 'hydrogen',
  files: {
    'package.json': `{
  "name": "hydrogen-storefront",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "shopify hydrogen build",
    "dev": "shopify hydrogen dev",
    "preview": "shopify hydrogen preview"
  },
  "dependencies": {
    "@remix-run/react": "^2.15.0",
    "@shopify/hydrogen": "^2024.10.0",
    "@shopify/remix-oxygen": "^2.0.0",
    "react": "^18.3.1",
    "react-dom": "^18.3.1"
  },
  "devDependencies": {
    "@remix-run/dev": "^2.15.0",
    "@shopify/cli": "^3.70.0",
    "typescript": "^5.6.0",
    "vite": "^5.4.0"
  }
}
`,
    'vite.config.ts': `import { defineConfig } from "vite";
import { hydrogen } from "@shopify/hydrogen/vite";
import { vitePlugin as remix } from "@remix-run/dev";

export default defineConfig({
  plugins: [hydrogen(), remix({ presets: [hydrogen.preset()] })],
});
`,
    'app/root.tsx': `import { Links, Meta, Outlet, Scripts } from "@remix-run/react";

export default function App() {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        <Meta />
        <Links />
      </head>
      <body>
        <Outlet />
        <Scripts />
      </body>
    </html>
  );
}
`,
    'app/routes/_index.tsx': `import { formatPrice } from "../lib/format";

export default function Homepage() {
  return (
    <main>
      <h1>Hydrogen storefront</h1>
      <p>Featured product: {formatPrice(2500, "USD")}</p>
    </main>
  );
}
`,
    'app/lib/format.ts': `export function formatPrice(cents: number, currency: string): string {
  return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(
    cents / 100,
  );
}
`,
    'tsconfig.json': `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "ESNext",
    "moduleResolution": "bundler",
    "jsx": "react-jsx",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true
  },
  "include": ["app"]
}
`,
  },
};

import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The build is deterministic and committed (web/dist is embedded by the Go
// host): fixed asset names without content hashes keep diffs readable, and
// no timestamps or absolute paths end up in the output.
export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "web/dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      output: {
        entryFileNames: "assets/[name].js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
      },
    },
  },
  server: {
    // `npm run dev` proxies the host's API to a running `agentadaptor serve`.
    proxy: Object.fromEntries(["/agui", "/healthz", "/session", "/login", "/logout"].map((p) => [p, "http://127.0.0.1:8080"])),
  },
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    environment: "node",
  },
});

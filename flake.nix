{
  description = "locklab: lock fairness and throughput experiments, native and simulated";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";
    rust-overlay = {
      url = "github:oxalica/rust-overlay";
      inputs.nixpkgs.follows = "nixpkgs";
    };
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, rust-overlay, flake-utils }:
    flake-utils.lib.eachSystem [ "x86_64-linux" "aarch64-linux" ] (system:
      let
        pkgs = import nixpkgs { inherit system; overlays = [ rust-overlay.overlays.default ]; };
        # The toolchain the results manifests record; pinned so `nix develop` and
        # `nix run` reproduce a run's build.
        toolchain = pkgs.rust-bin.stable."1.95.0".default.override {
          extensions = [ "rust-src" "clippy" "rustfmt" ];
        };
        rustPlatform = pkgs.makeRustPlatform { cargo = toolchain; rustc = toolchain; };
        python = pkgs.python3.withPackages (ps: [ ps.polars ps.nbclient ps.nbformat ps.ipykernel ps.matplotlib ]);
        locklab = rustPlatform.buildRustPackage {
          pname = "locklab";
          version = (builtins.fromTOML (builtins.readFile ./Cargo.toml)).workspace.package.version;
          src = ./.;
          cargoLock.lockFile = ./Cargo.lock;
          nativeBuildInputs = [ pkgs.git ];
          # Tests need a quick run and the notebook kernel; run them with `nix develop`.
          doCheck = false;
        };
      in
      {
        packages.default = locklab;
        apps.default = flake-utils.lib.mkApp { drv = locklab; name = "locklab"; };
        devShells.default = pkgs.mkShell {
          packages = [ toolchain pkgs.cargo-nextest python pkgs.git ];
        };
      });
}

{
  description = "locklab: lock fairness and throughput experiments, native and simulated";

  # flake.lock pins both inputs to one revision each (`nix flake update` moves them).
  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";
    rust-overlay = {
      url = "github:oxalica/rust-overlay";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs = { self, nixpkgs, rust-overlay }:
    let
      inherit (nixpkgs) lib;
      # Linux only: the native runner pins threads with sched_setaffinity and reads /sys.
      systems = [ "x86_64-linux" "aarch64-linux" ];
      version = (builtins.fromTOML (builtins.readFile ./Cargo.toml)).workspace.package.version;

      # The commit a run's manifest records. The build sandbox has no .git, so build.rs
      # takes these instead of asking git; a dirty tree has only `dirtyRev` ("<rev>-dirty").
      gitEnv = {
        LOCKLAB_GIT_COMMIT = self.rev or (lib.removeSuffix "-dirty" (self.dirtyRev or ""));
        LOCKLAB_GIT_DIRTY =
          if self ? rev then "false" else if self ? dirtyRev then "true" else "";
      };

      perSystem = system:
        let
          pkgs = import nixpkgs {
            inherit system;
            overlays = [ rust-overlay.overlays.default ];
          };
          # The toolchain the project is developed and tested with; the manifest
          # records `rustc --version`.
          toolchain = pkgs.rust-bin.stable."1.95.0".default.override {
            extensions = [ "rust-src" "clippy" "rustfmt" ];
          };
          rustPlatform = pkgs.makeRustPlatform { cargo = toolchain; rustc = toolchain; };
          # notebooks/requirements.txt: what the notebooks and their test need.
          python = pkgs.python3.withPackages (ps: [ ps.polars ps.nbclient ps.nbformat ps.ipykernel ]);

          locklabWith = args: rustPlatform.buildRustPackage ({
            pname = "locklab";
            inherit version;
            src = ./.;
            cargoLock.lockFile = ./Cargo.lock;
            env = gitEnv;
            meta = {
              description = "A declarative experiment language and reproducibility toolkit for lock fairness and throughput";
              license = [ lib.licenses.mit lib.licenses.asl20 ];
              mainProgram = "locklab";
              platforms = systems;
            };
          } // args);

          # `nix run` should not wait for a native quick run: the tests are `checks.tests`.
          locklab = locklabWith { doCheck = false; };

          # A `cargo` command over the vendored dependencies, as a check that passes
          # when the command does.
          cargoCheck = name: command: pkgs.stdenv.mkDerivation {
            name = "locklab-${name}";
            src = ./.;
            cargoDeps = rustPlatform.importCargoLock { lockFile = ./Cargo.lock; };
            nativeBuildInputs = [ rustPlatform.cargoSetupHook toolchain ];
            env.CARGO_NET_OFFLINE = "true";
            buildPhase = ''
              runHook preBuild
              ${command}
              runHook postBuild
            '';
            installPhase = "touch $out";
          };
        in
        {
          inherit locklab;
          checks = {
            # Every crate's tests, the notebook test included. They run a quick
            # experiment natively too; the sandbox usually hides /sys, and the runner
            # then takes the CPUs as one socket of `available_parallelism` cores.
            tests = locklabWith {
              pname = "locklab-tests";
              doCheck = true;
              cargoTestFlags = [ "--workspace" ];
              nativeCheckInputs = [ python ];
              # A writable home for IPython and Jupyter, which otherwise fall back to
              # temporary directories (Nix's $HOME does not exist).
              preCheck = ''
                export HOME=$(mktemp -d)
              '';
            };
            clippy = cargoCheck "clippy" "cargo clippy --workspace --all-targets -- -D warnings";
            fmt = cargoCheck "fmt" "cargo fmt --all -- --check";
          };
          devShell = pkgs.mkShell {
            packages = [ toolchain pkgs.cargo-nextest python pkgs.git ];
          };
        };

      all = lib.genAttrs systems perSystem;
      each = f: lib.mapAttrs (_: f) all;
    in
    {
      packages = each (s: { default = s.locklab; });
      apps = each (s: {
        default = {
          type = "app";
          program = lib.getExe s.locklab;
          meta.description = "Run locklab";
        };
      });
      checks = each (s: s.checks);
      devShells = each (s: { default = s.devShell; });
    };
}

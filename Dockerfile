# planwave in a container: build with the Rust toolchain, run from a slim image.
# Used by docker-compose.yml (`docker compose up --build`).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin planwave

FROM debian:bookworm-slim
# CA certificates for real model APIs over HTTPS; nothing else is needed at run time.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 planwave \
    && mkdir -p /runs && chown planwave /runs
COPY --from=build /src/target/release/planwave /usr/local/bin/planwave
USER planwave
WORKDIR /runs
ENTRYPOINT ["planwave"]
CMD ["--help"]

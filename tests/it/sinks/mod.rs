//! The repeater's sinks, each against the real broker it speaks to, started
//! by the tests on free ports: what reaches the broker, what a broker's
//! fault costs (nothing, at QoS 1), and what is refused, counted and
//! reported instead of retried for ever.
//!
//! - `nats`, `nats_trouble`: JetStream, and the conditions in which it
//!   cannot take events (none, full, replicas, message size).
//! - `rabbitmq_stream`, `rabbitmq_stream_faults`: RabbitMQ Streams, and a
//!   cluster node killed or a node frozen under the repeater.
//! - `kafka`, `kafka_tls_and_sasl`: Kafka (tansu), its faults, two repeaters of one
//!   source, and TLS with `--ca-file`, SASL SCRAM.
//! - `mqtt_failover`: `--sink` given twice for MQTT.
//! - `stall`: a sink that acknowledges nothing while events wait.
//! - `shared_source_id`: two writers under one `--source-id`.
//! - `refused_topics`: topics a sink cannot take.
//!
//! The MQTT sink's everyday behaviour is in `repeater::mqtt`, its faults in
//! `reliability`. `nats` and `rabbitmq_stream` also hold the readers other
//! areas use (`read_stream`, `try_read`, a numbered source), hence
//! `pub(crate)`.

pub(crate) mod kafka;
mod kafka_tls_and_sasl;
mod mqtt_failover;
pub(crate) mod nats;
pub(crate) mod nats_trouble;
pub(crate) mod rabbitmq_stream;
mod rabbitmq_stream_faults;
mod refused_topics;
mod shared_source_id;
mod stall;

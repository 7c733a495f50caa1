//! A quiche client and server connected in memory, for unit tests of what
//! the endpoints hand quiche: packets go straight from one to the other,
//! with no socket, no loss and no clock but quiche's own.

use std::net::SocketAddr;

use flowshare_quic::cert::ScratchDir;

use crate::http::Protocol;

/// A connected client and server.
pub(crate) struct Pipe {
    pub(crate) client: quiche::Connection,
    pub(crate) server: quiche::Connection,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    /// Holds the certificate while the connections live.
    _certs: ScratchDir,
}

impl Pipe {
    /// An established hq-interop connection; `server_settings` adjusts the
    /// server's configuration (flow control windows, ...).
    pub(crate) fn hq(server_settings: impl FnOnce(&mut quiche::Config)) -> Pipe {
        Pipe::new(Protocol::Hq, server_settings)
    }

    /// An established connection speaking `protocol`.
    pub(crate) fn new(protocol: Protocol, server_settings: impl FnOnce(&mut quiche::Config)) -> Pipe {
        let certs = ScratchDir::new("pipe").expect("scratch dir");
        let files = flowshare_quic::cert::write_self_signed(certs.path(), &["localhost".into()]).expect("certificate");
        let settings = |config: &mut quiche::Config| {
            config.set_application_protos(&[protocol.alpn()]).expect("alpn");
            config.set_initial_max_data(1 << 20);
            config.set_initial_max_stream_data_bidi_local(1 << 16);
            config.set_initial_max_stream_data_bidi_remote(1 << 16);
            config.set_initial_max_stream_data_uni(1 << 16);
            config.set_initial_max_streams_bidi(100);
            config.set_initial_max_streams_uni(10);
        };
        let mut server_config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
        settings(&mut server_config);
        server_config.load_cert_chain_from_pem_file(&files.cert.to_string_lossy()).expect("cert");
        server_config.load_priv_key_from_pem_file(&files.key.to_string_lossy()).expect("key");
        server_settings(&mut server_config);
        let mut client_config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
        settings(&mut client_config);
        client_config.verify_peer(false);

        let client_addr: SocketAddr = "127.0.0.1:1111".parse().expect("address");
        let server_addr: SocketAddr = "127.0.0.1:2222".parse().expect("address");
        let client_id = quiche::ConnectionId::from_vec(vec![1; 16]);
        let server_id = quiche::ConnectionId::from_vec(vec![2; 16]);
        let client = quiche::connect(Some("localhost"), &client_id, client_addr, server_addr, &mut client_config)
            .expect("connect");
        let server = quiche::accept(&server_id, None, server_addr, client_addr, &mut server_config).expect("accept");
        let mut pipe = Pipe { client, server, client_addr, server_addr, _certs: certs };
        for _ in 0..10 {
            pipe.exchange();
            if pipe.client.is_established() && pipe.server.is_established() {
                pipe.exchange();
                return pipe;
            }
        }
        panic!("the in-memory handshake did not complete");
    }

    /// Delivers everything either side has to send until both are quiet.
    pub(crate) fn exchange(&mut self) {
        let mut buffer = [0u8; 1500];
        loop {
            let mut moved = false;
            while let Ok((len, _)) = self.client.send(&mut buffer) {
                let info = quiche::RecvInfo { from: self.client_addr, to: self.server_addr };
                let _ = self.server.recv(&mut buffer[..len], info);
                moved = true;
            }
            while let Ok((len, _)) = self.server.send(&mut buffer) {
                let info = quiche::RecvInfo { from: self.server_addr, to: self.client_addr };
                let _ = self.client.recv(&mut buffer[..len], info);
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }
}

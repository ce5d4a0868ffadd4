use super::*;

#[test]
fn periods_are_powers_of_two_in_jacks_range() {
    for ok in [16, 32, 64, 128, 256, 1024, 8192] {
        assert!(validate_period(ok).is_ok(), "{ok}");
    }
    for bad in [0, 8, 100, 96, 16384, 3] {
        let e = validate_period(bad).unwrap_err().to_string();
        assert!(
            e.contains("powers of two") && e.contains(&bad.to_string()),
            "{e}"
        );
    }
}

#[test]
fn modes_parse_and_print() {
    for m in ["auto", "external", "dummy", "pipewire"] {
        assert_eq!(m.parse::<ServerMode>().unwrap().to_string(), m);
    }
    assert!("pulse"
        .parse::<ServerMode>()
        .unwrap_err()
        .contains("auto, external, dummy or pipewire"));
}

#[test]
fn server_names_are_checked() {
    let mut req = ServerRequest {
        mode: ServerMode::Dummy,
        name: Some("bad name;rm".into()),
        rate_hz: None,
        period_frames: None,
        jackd: None,
        start_timeout: Duration::from_secs(1),
    };
    assert!(matches!(req.validate(), Err(AudioError::BadServerName(_))));
    req.name = Some("audiolat-test.1".into());
    assert!(req.validate().is_ok());
    req.rate_hz = Some(1000);
    assert!(req.validate().unwrap_err().to_string().contains("44100"));
}

#[test]
fn no_jackd_means_install_jackd2() {
    let req = ServerRequest {
        mode: ServerMode::Dummy,
        name: Some(format!("audiolat-nojackd-{}", std::process::id())),
        rate_hz: None,
        period_frames: None,
        jackd: None,
        start_timeout: Duration::from_secs(1),
    };
    let e = JackServer::connect(&req).unwrap_err().to_string();
    assert!(e.contains("jackd2"), "{e}");
}

//! Authentication: htpasswd and JWT (to be written).
